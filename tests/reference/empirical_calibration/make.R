# EmpiricalCalibration 3.1.4 (OHDSI GitHub, built here) on its own example data (sccs: negative
# and positive controls of a self-controlled case series), for tests/test_calibration.py:
# fitNull (Nelder-Mead, so its optimum holds to ~1e-4), and calibrateP and
# calibrateConfidenceInterval(convertNullToErrorModel(null)) of every estimate given
# that null. Run: Rscript make.R
suppressMessages(library(EmpiricalCalibration))
data(sccs)
neg <- sccs[sccs$groundTruth == 0, ]
pos <- sccs[sccs$groundTruth == 1, ]
write.csv(sccs[, c("logRr", "seLogRr", "groundTruth")], "sccs.csv", row.names = FALSE)
null <- fitNull(neg$logRr, neg$seLogRr)
ci <- calibrateConfidenceInterval(sccs$logRr, sccs$seLogRr, convertNullToErrorModel(null))
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
writeLines(c(paste("null", num(c(null[1], null[2]))),
             paste("p_all", num(calibrateP(null, sccs$logRr, sccs$seLogRr))),
             paste("ci_log_rr", num(ci$logRr)), paste("ci_lower", num(ci$logLb95Rr)),
             paste("ci_upper", num(ci$logUb95Rr)), paste("ci_se", num(ci$seLogRr)),
             paste0("# R ", R.version$major, ".", R.version$minor, ", EmpiricalCalibration ",
                    packageVersion("EmpiricalCalibration"))), "calibration.txt")
