# Covariate normalization references for tests/test_normalize.py: Cyclops 3.7.0's
# createCyclopsData(normalize = KIND), fitted with a prior, coefficients on the original scale
# (coef(fit, rescale = TRUE)). Continuous covariates without zeros (Cyclops' dense and sparse
# columns then agree: median and q95 are over the stored values). Run: Rscript make.R
suppressMessages(library(Cyclops))
set.seed(11)
n <- 500
d <- data.frame(x1 = rnorm(n, 50, 10), x2 = rexp(n, 1 / 3) + 0.1, x3 = runif(n, -200, 300))
d$y <- rbinom(n, 1, plogis(-1 + 0.04 * (d$x1 - 50) + 0.2 * d$x2 + 0.002 * d$x3))
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")
ctrl <- createControl(noiseLevel = "silent", tolerance = 1e-12, convergenceType = "gradient")
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
out <- c()
for (kind in c("stdev", "max", "median", "q95")) {
  cd <- createCyclopsData(y ~ x1 + x2 + x3, data = d, modelType = "lr", normalize = kind)
  f <- fitCyclopsModel(cd, prior = createPrior("laplace", variance = 0.5), control = ctrl)
  out <- c(out, paste(kind, "coef", num(coef(f, rescale = TRUE))), paste(kind, "scale", num(cd$scale)))
}
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", Cyclops ", packageVersion("Cyclops")))
writeLines(out, "cyclops.txt")
