# Fine-Gray with user-supplied censoring weights, for tests/test_censor_weights.py.
# Cyclops 3.7.0: createCyclopsData(Surv ~ x, modelType = "fgr", censorWeights = w), unpenalized,
# coefficients; (a) w = getFineGrayWeights (the Kaplan-Meier G(T-), as riskset's default), and
# (b) w = exp(-time / 15), a censoring survival that is not the Kaplan-Meier one (riskset must use
# it as given: a competing row's weight is divided by its own, an event's risk set scaled by the
# event's). Distinct times (no event tied with a competing row, whose convention differs).
# Robust SE with the weights taken as known: survival::coxph on the Fine-Gray expansion (each
# competing row's interval (T_r, t_k] per later event time, weight w(t_k)/w(T_r)), cluster(id):
# an independent second implementation of the sandwich without crr's censoring-estimation term.
# Run: Rscript make.R
suppressMessages({library(Cyclops); library(survival)})
set.seed(5)
n <- 300
d <- data.frame(x1 = rnorm(n), x2 = rbinom(n, 1, 0.4))
t1 <- rexp(n, 0.05 * exp(0.5 * d$x1 - 0.4 * d$x2))
t2 <- rexp(n, 0.04 * exp(-0.3 * d$x1 + 0.6 * d$x2))
cens <- runif(n, 5, 40)
d$time <- round(pmin(t1, t2, cens), 6)
d$status <- ifelse(cens <= pmin(t1, t2), 0, ifelse(t1 < t2, 1, 2))
stopifnot(!any(duplicated(d$time)))
d$w_exp <- exp(-d$time / 15)
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
ctrl <- createControl(noiseLevel = "silent", tolerance = 1e-12, convergenceType = "gradient")
out <- c()
fg <- getFineGrayWeights(d$time, d$status)
for (case in c("km", "exp")) {
  w <- if (case == "km") fg$weights else d$w_exp
  cd <- createCyclopsData(fg$surv ~ d$x1 + d$x2, modelType = "fgr", censorWeights = w)
  f <- fitCyclopsModel(cd, prior = createPrior("none"), control = ctrl)
  out <- c(out, paste(case, "coef", num(coef(f))), paste(case, "censor_weights", num(w)))
}
# the expansion: every row once over (0, T]; a competing row also over (T, t_k] pieces, one per
# later event time, weight w(t_k-)/w(T) with w(t_k-) the weight of the event at t_k (distinct times)
ev_t <- sort(d$time[d$status == 1])
ev_w <- d$w_exp[match(ev_t, d$time)]
rows <- list(data.frame(id = seq_len(n), start = 0, stop = d$time, event = as.integer(d$status == 1),
                        wt = 1, x1 = d$x1, x2 = d$x2))
for (i in which(d$status == 2)) {
  later <- which(ev_t > d$time[i])
  if (length(later) == 0) next
  starts <- c(d$time[i], ev_t[later][-length(later)])
  rows[[length(rows) + 1]] <- data.frame(id = i, start = starts, stop = ev_t[later], event = 0L,
                                         wt = ev_w[later] / d$w_exp[i], x1 = d$x1[i], x2 = d$x2[i])
}
ex <- do.call(rbind, rows)
cx <- coxph(Surv(start, stop, event) ~ x1 + x2, data = ex, weights = wt, cluster = id, ties = "breslow",
            control = coxph.control(eps = 1e-10, iter.max = 100))
out <- c(out, paste("exp expansion_coef", num(coef(cx))), paste("exp robust_var", num(as.vector(vcov(cx)))))
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", Cyclops ", packageVersion("Cyclops"),
                     ", survival ", packageVersion("survival")))
writeLines(out, "cyclops.txt")
