# Self-controlled case series with age and season splines and a pre-exposure window, for
# tests/test_sccs_splines.py: the era table built here by a per-case loop (independent of
# riskset's vectorized builder), the splines as SelfControlledCaseSeries makes them
# (splines::bs degree 2 for age, knots at the 1..99% quantiles of the ages at the outcomes;
# mgcv::cSplineDes order 3 for the month of the year, knots 0.5 + 12 (0:4) / 4, the last column
# left out: the basis sums to one, which the case's intercept already is), and the conditional
# Poisson fit by gnm (eliminate = case); glm with factor(case) as the second implementation.
# Eras: cut at the observation start/end, every window start/end (risk window = the exposure
# era [start, end); pre-exposure window [start - 30, start)), and the first day of every calendar
# month; age is taken at max(month start, observation start). Times: integer days since 1970-01-01.
# Run: Rscript make.R
suppressMessages({library(splines); library(mgcv); library(gnm)})
set.seed(11)
n <- 400
obs <- data.frame(person_id = 1:n, start = sample(16000:17500, n, replace = TRUE))
obs$end <- obs$start + sample(365:1100, n, replace = TRUE)
obs$birth <- obs$start - round(runif(n, 20, 80) * 365.25)
k <- rpois(n * 2, 0.8)
exp_ <- data.frame(person_id = rep(rep(1:n, 2), k), drug = rep(rep(c("a", "b"), each = n), k))
exp_$start <- obs$start[exp_$person_id] + floor(runif(nrow(exp_)) * (obs$end - obs$start)[exp_$person_id])
exp_$end <- exp_$start + sample(14:90, nrow(exp_), replace = TRUE)
# outcomes: a Poisson count per person-month at a rate with season, drug a (IRR 2) and its pre-window (0.5)
months_of <- function(d) as.POSIXlt(as.Date(d, origin = "1970-01-01"))$mon + 1
month_start <- function(d) { p <- as.POSIXlt(as.Date(d, origin = "1970-01-01")); p$mday <- 1; as.numeric(as.Date(p)) }
next_month <- function(d) { p <- as.POSIXlt(as.Date(month_start(d), origin = "1970-01-01")); p$mon <- p$mon + 1;
                            as.numeric(as.Date(p)) }
out <- data.frame(person_id = integer(0), date = numeric(0))
for (i in 1:n) {
  days <- obs$start[i]:(obs$end[i] - 1)
  e <- exp_[exp_$person_id == i & exp_$drug == "a", ]
  inside <- sapply(days, function(t) any(e$start <= t & t < e$end))
  pre <- sapply(days, function(t) any(e$start - 30 <= t & t < e$start))
  rate <- 0.002 * exp(0.5 * cos(2 * pi * (months_of(days) - 1) / 12) + log(2) * inside + log(0.5) * pre -
                      0.5 * (((days - obs$birth[i]) / 365.25 - 50) / 30)^2)
  hit <- days[rpois(length(days), rate) > 0]
  if (length(hit)) out <- rbind(out, data.frame(person_id = i, date = hit))
}
write.csv(obs, "observation.csv", row.names = FALSE)
write.csv(exp_, "exposures.csv", row.names = FALSE)
write.csv(out, "outcomes.csv", row.names = FALSE)

# -- eras, case by case -------------------------------------------------------------------
cases <- sort(unique(out$person_id))
ages_at_outcomes <- out$date - obs$birth[out$person_id]
age_knots <- unique(quantile(ages_at_outcomes, seq(0.01, 0.99, length.out = 5), names = FALSE))
season_knots <- 0.5 + seq(0, 12, length.out = 5)
rows <- list()
for (i in cases) {
  a <- obs$start[i]; b <- obs$end[i]
  e <- exp_[exp_$person_id == i, ]
  win <- rbind(data.frame(name = e$drug, s = e$start, t = e$end),
               data.frame(name = paste0(e$drug, rep(" pre-exposure", nrow(e))), s = e$start - 30, t = e$start))
  win$s <- pmax(win$s, a); win$t <- pmin(win$t, b)
  win <- win[win$t > win$s, ]
  m <- c(); d <- next_month(a); while (d < b) { m <- c(m, d); d <- next_month(d) }
  pts <- sort(unique(c(a, b, win$s, win$t, m)))
  for (j in seq_len(length(pts) - 1)) {
    s <- pts[j]; t <- pts[j + 1]
    row <- data.frame(case = i, length = t - s, events = sum(out$date[out$person_id == i] >= s &
                                                              out$date[out$person_id == i] < t),
                      age = max(month_start(s), a) - obs$birth[i], month = months_of(s))
    for (w in c("a", "b", "a pre-exposure", "b pre-exposure"))
      row[[w]] <- as.numeric(any(win$name == w & win$s <= s & t <= win$t))
    rows[[length(rows) + 1]] <- row
  }
}
eras <- do.call(rbind, rows)
A <- bs(pmin(pmax(eras$age, age_knots[1]), age_knots[5]), knots = age_knots[2:4],
        Boundary.knots = age_knots[c(1, 5)], degree = 2)
S <- cSplineDes(eras$month, season_knots, ord = 3)[, 1:3]
colnames(A) <- paste0("age_spline_", 1:ncol(A)); colnames(S) <- paste0("season_spline_", 1:3)
X <- cbind(as.matrix(eras[, c("a", "a pre-exposure", "b", "b pre-exposure")]), A, S)
colnames(X)[1:4] <- c("a", "a_pre", "b", "b_pre")
d <- data.frame(X, events = eras$events, length = eras$length, case = factor(eras$case))
f <- as.formula(paste("events ~", paste(colnames(X), collapse = " + "), "+ offset(log(length))"))
g <- gnm(f, eliminate = case, family = poisson, data = d, tolerance = 1e-12, iterMax = 1000, verbose = FALSE)
g2 <- glm(update(f, . ~ . + case), family = poisson, data = d, control = glm.control(epsilon = 1e-14, maxit = 100))
# the age coefficients are ill-conditioned one by one (bs without intercept sums to 1 - B1,
# nearly the case's own intercept); the age curve they make is not: compare that
grid <- seq(age_knots[1], age_knots[5], length.out = 101)
Ag <- bs(grid, knots = age_knots[2:4], Boundary.knots = age_knots[c(1, 5)], degree = 2)
curve <- function(b) { v <- Ag %*% b[paste0("age_spline_", 1:5)]; v - mean(v) }
others <- setdiff(names(coef(g)), paste0("age_spline_", 1:5))
stopifnot(max(abs(coef(g)[others] - coef(g2)[others])) < 1e-7, max(abs(curve(coef(g)) - curve(coef(g2)))) < 1e-5)
eta <- as.vector(X %*% coef(g)) + log(d$length)
loglik <- sum(tapply(seq_along(eta), d$case, function(r) sum(d$events[r] * (eta[r] - log(sum(exp(eta[r])))))),
              na.rm = TRUE)
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
writeLines(c(paste("names", paste(c("a", "a pre-exposure", "b", "b pre-exposure", colnames(A), colnames(S)),
                                  collapse = ",")),
             paste("coef", num(coef(g))), paste("se", num(sqrt(diag(vcov(g))))),
             paste("age_curve", num(curve(coef(g)))), paste("loglik", num(loglik)),
             paste("age_knots", num(age_knots)), paste("season_knots", num(season_knots)),
             paste("eras", nrow(eras)), paste("events", sum(eras$events)), paste("cases", length(cases)),
             paste("glm_max_abs_diff_drugs_season", sprintf("%.3g", max(abs(coef(g)[others] - coef(g2)[others])))),
             paste("glm_max_abs_diff_age_curve", sprintf("%.3g", max(abs(curve(coef(g)) - curve(coef(g2))))))),
           "gnm.txt")
