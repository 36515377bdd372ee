# Jeffreys-prior references for tests/test_jeffreys.py: Cyclops 3.7.0's "jeffreys" prior
# (penalty 0.5 log |I(beta)| of the model's one indicator covariate, Cyclops' restriction).
# Run from this folder: Rscript make.R
suppressMessages({library(Cyclops); library(survival)})
set.seed(7)
n <- 400
trt <- rbinom(n, 1, 0.3)
t_event <- rexp(n, 0.05 * exp(1.0 * trt)); t_cens <- runif(n, 1, 15)
time <- round(pmin(t_event, t_cens), 2) + 0.01; status <- as.integer(t_event <= t_cens)
status[trt == 1][-which(status[trt == 1] == 1)[1]] <- 0L   # one event among the treated
y <- rbinom(n, 1, ifelse(trt == 1, 0.02, 0.2))          # logistic outcome, rare among the treated
cnt <- rpois(n, 0.3 * exp(-1.5 * trt)); len <- runif(n, 1, 3)    # Poisson counts with exposure
d <- data.frame(trt, time, status, y, cnt, len)
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")
ctrl <- createControl(noiseLevel = "silent", tolerance = 1e-12, convergenceType = "gradient")
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
out <- c(sprintf("cox_events_treated %d", sum(d$status[d$trt == 1])), sprintf("logistic_events_treated %d", sum(d$y[d$trt == 1])))
cox <- createCyclopsData(Surv(time, status) ~ trt, data = d, modelType = "cox")
f <- fitCyclopsModel(cox, prior = createPrior("jeffreys"), control = ctrl)
out <- c(out, paste("cox", num(coef(f)), num(logLik(f))))
lr <- createCyclopsData(y ~ trt - 1, data = d, modelType = "lr")
f <- fitCyclopsModel(lr, prior = createPrior("jeffreys"), control = ctrl)
out <- c(out, paste("logistic_no_intercept", num(coef(f)), num(logLik(f))))
pr <- createCyclopsData(cnt ~ trt - 1 + offset(log(len)), data = d, modelType = "pr")
f <- fitCyclopsModel(pr, prior = createPrior("jeffreys"), control = ctrl)
out <- c(out, paste("poisson_no_intercept", num(coef(f)), num(logLik(f))))
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", Cyclops ", packageVersion("Cyclops")))
writeLines(out, "cyclops.txt")
