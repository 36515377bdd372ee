# Reference values from OHDSI Cyclops for tests/test_cyclops_engine.py.
# Run from the repository root:  Rscript tests/reference/cyclops_engine/make.R
# (Cyclops built from source as ../shared/bench/README.md describes; R 4.2.2.)
# Writes data.csv (the simulated rows, identical for both sides) and cyclops.txt
# (key value lines, 17 significant digits).
library(Cyclops)
library(survival)
set.seed(20261129)
n <- 400
d <- data.frame(x1 = rbinom(n, 1, 0.4), x2 = rnorm(n), x3 = rbinom(n, 1, 0.2), x4 = rnorm(n))
eta <- -1 + 0.5 * d$x1 + 0.3 * d$x2 - 0.4 * d$x3
d$y <- rbinom(n, 1, plogis(eta))
d$count <- rpois(n, exp(eta) * 2)
d$ptime <- runif(n, 0.5, 2)
d$count <- rpois(n, d$ptime * exp(eta))
d$time <- round(rexp(n, exp(eta) / 5), 1) + 0.1
d$status <- rbinom(n, 1, 0.8)
d$stratum <- rep(1:100, each = 4)
write.csv(d, "tests/reference/cyclops_engine/data.csv", row.names = FALSE)
out <- file("tests/reference/cyclops_engine/cyclops.txt", "w")
put <- function(key, value) writeLines(paste(key, paste(formatC(value, digits = 17, format = "g"), collapse = " ")), out)
put("version", 0)  # see packageVersion("Cyclops") in the test docstring
points <- c(-0.5, 0, 0.25, 0.5, 1)
ctrl <- createControl(tolerance = 1e-12, noiseLevel = "silent")

# a. Poisson with offset, no prior: profile of x1 at points, with derivatives
cd <- createCyclopsData(count ~ x1 + x2 + x3 + offset(log(ptime)), data = d, modelType = "pr")
f <- fitCyclopsModel(cd, control = ctrl)
put("poisson.coef", coef(f)); put("poisson.loglik", logLik(f))
p <- getCyclopsProfileLogLikelihood(f, "x1", x = points, returnDerivatives = TRUE)
put("poisson.profile.value", p$value); put("poisson.profile.derivative", p$derivative)

# b. Cox (Breslow) with a Laplace prior (variance 0.1) excluding x1: profile of x1 and of x2
cd <- createCyclopsData(Surv(time, status) ~ x1 + x2 + x3 + x4, data = d, modelType = "cox")
f <- fitCyclopsModel(cd, prior = createPrior("laplace", variance = 0.1, exclude = "x1"), control = ctrl)
put("cox.coef", coef(f)); put("cox.loglik", logLik(f))
for (pen in c(TRUE, FALSE)) {
  for (parm in c("x1", "x2")) {
    # Cyclops has no derivative of a penalized coefficient's prior ("not yet implemented")
    derivatives <- !(pen && parm == "x2")
    p <- getCyclopsProfileLogLikelihood(f, parm, x = points, includePenalty = pen, returnDerivatives = derivatives)
    put(sprintf("cox.%s.penalty%d.value", parm, pen), p$value)
    if (derivatives) put(sprintf("cox.%s.penalty%d.derivative", parm, pen), p$derivative)
  }
}
p <- getCyclopsProfileLogLikelihood(f, "x1", bounds = c(log(0.1), log(10)))
put("cox.adaptive.point", p$point); put("cox.adaptive.value", p$value)

# c. conditional Poisson (matched sets of 4) with offset: profile of x1
cd <- createCyclopsData(count ~ x1 + x2 + strata(stratum) + offset(log(ptime)), data = d, modelType = "cpr")
f <- fitCyclopsModel(cd, control = ctrl)
put("cpr.coef", coef(f))
p <- getCyclopsProfileLogLikelihood(f, "x1", x = points, returnDerivatives = TRUE)
put("cpr.profile.value", p$value); put("cpr.profile.derivative", p$derivative)

# d. logistic with x2 fixed at 0.25, a normal prior (variance 1) on the others but the intercept
cd <- createCyclopsData(y ~ x1 + x2 + x3 + x4, data = d, modelType = "lr")
f <- fitCyclopsModel(cd, prior = createPrior("normal", variance = 1, exclude = "(Intercept)"), control = ctrl,
                     startingCoefficients = c(0, 0, 0.25, 0, 0), fixedCoefficients = c(FALSE, FALSE, TRUE, FALSE, FALSE))
put("fixed.coef", coef(f)); put("fixed.loglik", logLik(f))

# e. univariable correlation with y
cd <- createCyclopsData(y ~ x1 + x2 + x3 + x4, data = d, modelType = "lr")
put("correlation", getUnivariableCorrelation(cd))

# f. predictive log-likelihood of held-out rows (weight 0 at the fit, 1 when scored)
held <- as.numeric(seq_len(n) %% 4 == 0)
f <- fitCyclopsModel(cd, prior = createPrior("none"), control = ctrl, weights = 1 - held)
put("predictive.logistic.coef", coef(f))
put("predictive.logistic", Cyclops:::getCyclopsPredictiveLogLikelihood(f, held))
cd <- createCyclopsData(Surv(time, status) ~ x1 + x2 + x3 + x4, data = d, modelType = "cox")
f <- fitCyclopsModel(cd, prior = createPrior("none"), control = ctrl, weights = 1 - held)
put("predictive.cox.coef", coef(f))
put("predictive.cox", Cyclops:::getCyclopsPredictiveLogLikelihood(f, held))
close(out)
