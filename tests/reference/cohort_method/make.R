# CohortMethod references for tests/test_study.py, from CohortMethod's own code (OHDSI GitHub,
# 6.0.2): its C++ matcher (src/Match.cpp, through Rcpp) and its R functions (R/PsFunctions.R,
# R/Balance.R, sourced; CohortMethod itself needs a database stack not installed here).
# Run with the source unpacked at $COHORT_METHOD (default /tmp/cm): Rscript make.R
suppressMessages({library(Rcpp); library(dplyr); library(checkmate)})
src <- Sys.getenv("COHORT_METHOD", "/tmp/cm")
ParallelLogger <- NULL
logDebug <- function(...) invisible(NULL)
assign("ParallelLogger::logDebug", logDebug)
wrapper <- tempfile(fileext = ".cpp")
writeLines(c(sprintf('#include "%s/src/Match.cpp"', src), '#include <Rcpp.h>', '// [[Rcpp::export]]',
             'std::vector<int64_t> matchPs(std::vector<double> ps, std::vector<int> treatment, unsigned int maxRatio, double caliper) {',
             '  ohdsi::cohortMethod::Match m(ps, treatment, maxRatio, caliper); return m.match(); }'), wrapper)
sourceCpp(wrapper)
matchPsInternal <- function(ps, treatment, maxRatio, caliper) data.frame(stratumId = as.numeric(matchPs(ps, treatment, maxRatio, caliper)))
env <- environment()
for (f in c("PsFunctions.R", "Balance.R")) {
  code <- gsub("ParallelLogger::logDebug", "logDebug", readLines(file.path(src, "R", f)))
  code <- code[!grepl("checkmate::", code)]  # its argument checks expect the package's R6 settings objects
  code <- gsub("join_by\\(([^)]*)\\)", "c(\\1)", code)  # dplyr 1.0 here: equality joins by name
  eval(parse(text = code), envir = env)
}
# the settings objects as plain lists with CohortMethod's defaults (its R6 classes need more of the package)
createMatchOnPsArgs <- function(caliper = 0.2, caliperScale = "standardized logit", maxRatio = 1)
  list(caliper = caliper, caliperScale = caliperScale, maxRatio = maxRatio, allowReverseMatch = FALSE,
       matchColumns = c(), matchCovariateIds = c())
createStratifyByPsArgs <- function(numberOfStrata = 10, baseSelection = "all")
  list(numberOfStrata = numberOfStrata, baseSelection = baseSelection, stratificationColumns = c(),
       stratificationCovariateIds = c())
createTrimByPsArgs <- function(trimFraction = NULL, equipoiseBounds = NULL, trimMethod = "symmetric")
  list(trimFraction = trimFraction, equipoiseBounds = equipoiseBounds, maxWeight = NULL, trimMethod = trimMethod)
set.seed(21)
n <- 600; p <- 8
x <- matrix(rbinom(n * p, 1, rep(c(0.5, 0.3, 0.2, 0.1, 0.4, 0.05, 0.6, 0.25), each = n)), n, p)
x[, 8] <- round(rnorm(n, 50, 10), 2)  # a continuous covariate
ps <- plogis(-0.4 + 1.2 * x[, 1] - 0.8 * x[, 2] + 0.6 * x[, 3] + 0.02 * (x[, 8] - 50))
treatment <- rbinom(n, 1, ps)
ps <- round(ps + runif(n, -0.01, 0.01), 9)  # distinct scores (no equidistant pairs)
d <- data.frame(rowId = 1:n, treatment = treatment, propensityScore = ps, x)
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")
pop <- d[, c("rowId", "treatment", "propensityScore")]
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
out <- c()
stratum_of <- function(res) { s <- rep(-1, n); s[res$rowId] <- res$stratumId; s }
for (args in list(list("m1", createMatchOnPsArgs()), list("m3", createMatchOnPsArgs(maxRatio = 3)),
                  list("m0_ps", createMatchOnPsArgs(caliper = 0.05, caliperScale = "propensity score", maxRatio = 0)),
                  list("m2_std", createMatchOnPsArgs(caliper = 0.1, caliperScale = "standardized", maxRatio = 2)))) {
  out <- c(out, paste(args[[1]], "strata", num(stratum_of(matchOnPs(pop, args[[2]])))))
}
out <- c(out, paste("s5_all", "strata", num(stratum_of(stratifyByPs(pop, createStratifyByPsArgs(5))))))
out <- c(out, paste("s4_target", "strata", num(stratum_of(stratifyByPs(pop, createStratifyByPsArgs(4, baseSelection = "target"))))))
for (e in c("ate", "att", "ato")) out <- c(out, paste(e, "iptw", num(computeIptw(pop, e)$iptw)))
out <- c(out, paste("pref", "score", num(computePreferenceScore(pop)$preferenceScore)))
keep <- function(res) { k <- rep(0, n); k[res$rowId] <- 1; k }
out <- c(out, paste("trim_sym", "kept", num(keep(trimByPs(pop, createTrimByPsArgs(trimFraction = 0.05))))))
out <- c(out, paste("trim_asym", "kept", num(keep(trimByPs(pop, createTrimByPsArgs(trimFraction = 0.05, trimMethod = "asymmetric"))))))
out <- c(out, paste("trim_equipoise", "kept", num(keep(trimByPs(pop, createTrimByPsArgs(equipoiseBounds = c(0.3, 0.7)))))))
# balance (computeMeansPerGroup): covariates in long form, every value (zeros dropped)
cov <- data.frame(rowId = rep(1:n, p), covariateId = rep(1:p, each = n), covariateValue = as.vector(x))
cov <- cov[cov$covariateValue != 0, ]
cmd <- list(covariates = cov, covariateRef = data.frame(covariateId = 1:p))
filterCovariates <- function(covariates, covariateRef, covariateFilter) covariates
balance <- function(label, cohorts) {
  m <- computeMeansPerGroup(cohorts, cmd, NULL) |> arrange(covariateId)
  c(paste(label, "mean_target", num(m$meanTarget)), paste(label, "sd_target", num(m$sdTarget)),
    paste(label, "mean_comparator", num(m$meanComparator)), paste(label, "sd_comparator", num(m$sdComparator)),
    paste(label, "std_diff", num(m$stdDiff)))
}
out <- c(out, balance("unadjusted", pop), balance("m1", matchOnPs(pop, createMatchOnPsArgs())),
         balance("m3", matchOnPs(pop, createMatchOnPsArgs(maxRatio = 3))),
         balance("s5_all", stratifyByPs(pop, createStratifyByPsArgs(5))),
         balance("ate", computeIptw(pop, "ate")))
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", CohortMethod 6.0.2 source (PsFunctions.R, ",
                     "Balance.R, Match.cpp)"))
writeLines(out, "cohort_method.txt")
