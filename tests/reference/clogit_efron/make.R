# Conditional logistic regression with Efron ties (n:m matched sets) for
# tests/test_conditional_efron.py: R's survival::clogit(method = "efron"). Run: Rscript make.R
library(survival)
set.seed(21)
sets <- 80; size <- sample(3:7, sets, replace = TRUE)
d <- data.frame(stratum = rep(seq_len(sets), size))
n <- nrow(d)
d$x1 <- rnorm(n); d$x2 <- rbinom(n, 1, 0.4); d$x3 <- rnorm(n, 2)
score <- 0.8 * d$x1 - 0.6 * d$x2 + 0.3 * d$x3 + rlogis(n)
d$case <- 0
for (s in seq_len(sets)) {           # 1 to 3 cases per set, the highest scores
  rows <- which(d$stratum == s); m <- sample(1:min(3, length(rows) - 1), 1)
  d$case[rows[order(-score[rows])[1:m]]] <- 1
}
write.csv(d, "data.csv", row.names = FALSE)
d <- read.csv("data.csv")
num <- function(v) paste(sprintf("%.17g", v), collapse = " ")
f <- clogit(case ~ x1 + x2 + x3 + strata(stratum), data = d, method = "efron", control = coxph.control(eps = 1e-12))
out <- c(paste("coef", num(coef(f))), paste("se", num(sqrt(diag(vcov(f))))), paste("loglik", num(f$loglik[2])))
fb <- clogit(case ~ x1 + x2 + x3 + strata(stratum), data = d, method = "breslow", control = coxph.control(eps = 1e-12))
out <- c(out, paste("breslow_coef", num(coef(fb))))
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", survival ", packageVersion("survival")))
writeLines(out, "survival.txt")
