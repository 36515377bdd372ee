# Broken adaptive ridge and iterative hard thresholding references for
# tests/test_adaptive_ridge.py: BrokenAdaptiveRidge 1.0.1 and IterativeHardThresholding (their
# sources, OHDSI GitHub) over Cyclops 3.7.0. Run from this folder: Rscript make.R
suppressMessages({library(Cyclops); library(BrokenAdaptiveRidge); library(IterativeHardThresholding); library(survival)})
set.seed(666)  # the packages' own test data: logistic, n = 1000, p = 20, 3 true effects
p <- 20; n <- 1000
beta <- c(0.5, 0, 0, -1, 1.2, rep(0, p - 5))
x <- matrix(rnorm(p * n), ncol = p)
y <- rbinom(n, 1, 1 / (1 + exp(-x %*% beta)))
# survival outcomes on the same covariates (Cox), exponential times, 30% censored
t_event <- rexp(n, exp(x %*% beta) / 10); t_cens <- rexp(n, 1 / 25)
time <- round(pmin(t_event, t_cens), 3) + 0.001; status <- as.integer(t_event <= t_cens)
d <- data.frame(y = y, time = time, status = status, x)
names(d)[4:(3 + p)] <- paste0("x", 1:p)
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")  # the rows exactly as the tests read them
ctrl <- createControl(noiseLevel = "silent", tolerance = 1e-11)
ctrl_iht <- createControl(noiseLevel = "silent", tolerance = 1e-8)  # 1e-11: the best-subset refit stops unconverged
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
out <- c()
covs <- paste(paste0("x", 1:p), collapse = " + ")
# a fresh Cyclops data object per fit: a fit leaves state (fixed coefficients) in it
lr <- function() createCyclopsData(as.formula(paste("y ~", covs)), data = d, modelType = "lr")
cox <- function() createCyclopsData(as.formula(paste("Surv(time, status) ~", covs)), data = d, modelType = "cox")
run <- function(name, data, prior, control = ctrl) {
  message(name); f <- suppressWarnings(fitCyclopsModel(data(), prior = prior, control = control))
  out <<- c(out, paste(name, num(coef(f))))
}
run("bar_logistic_bic", lr, createBarPrior("bic"))
run("bar_logistic_bic_best_subset", lr, createBarPrior("bic", fitBestSubset = TRUE))
run("bar_logistic_penalty2_exclude_x2", lr, createBarPrior(2, exclude = c("x2")))
run("bar_cox_bic", cox, createBarPrior("bic"))
# IterativeHardThresholding 1.0.3 means to leave the intercept unpenalized (it warns "Excluding
# intercept from regularization") but matches its label, a double, against integer64 covariate
# ids, which finds nothing: the intercept is then penalized, thresholded and can be cut. Naming
# it in exclude does what the package says (and what BrokenAdaptiveRidge does); riskset follows that.
run("iht_logistic_k2_best_subset", lr, createIhtPrior(K = 2, "bic", exclude = "(Intercept)", fitBestSubset = TRUE),
    ctrl_iht)
run("iht_logistic_k3", lr, createIhtPrior(K = 3, "bic", exclude = "(Intercept)"), ctrl_iht)
run("iht_cox_k2", cox, createIhtPrior(K = 2, "bic"), ctrl_iht)
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", Cyclops ", packageVersion("Cyclops"),
                     ", BrokenAdaptiveRidge ", packageVersion("BrokenAdaptiveRidge"),
                     ", IterativeHardThresholding ", packageVersion("IterativeHardThresholding")))
writeLines(out, "cyclops.txt")
