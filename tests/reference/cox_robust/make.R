# Robust (sandwich) Cox covariances, score residuals and cox.zph of (start, stop] rows:
# the references of tests/test_cox_robust.py. Run from this folder: Rscript make.R
library(survival)
lung <- na.omit(survival::lung[, c("time", "status", "age", "sex", "ph.ecog")])
lung$status <- lung$status - 1
lung$w <- 1 + (seq_len(nrow(lung)) %% 3) / 2          # case weights 1, 1.5, 2
lung$cl <- (seq_len(nrow(lung)) - 1) %/% 3            # clusters of three rows
write.csv(lung, "lung.csv", row.names = FALSE)
heart <- survival::heart
heart$transplant <- as.integer(heart$transplant) - 1
write.csv(heart, "heart.csv", row.names = FALSE)
num <- function(x) sprintf("%.17g", x)
out <- c()
emit <- function(name, fit) {
  v <- vcov(fit)
  out <<- c(out, paste0(name, " coef ", paste(num(coef(fit)), collapse = " ")),
            paste0(name, " robust ", paste(num(as.vector(v)), collapse = " ")),
            paste0(name, " naive ", paste(num(as.vector(fit$naive.var)), collapse = " ")))
}
for (ties in c("breslow", "efron")) {
  emit(paste0("lung_", ties), coxph(Surv(time, status) ~ age + ph.ecog + sex, lung, ties = ties, robust = TRUE))
  emit(paste0("lung_strata_weights_", ties),
       coxph(Surv(time, status) ~ age + ph.ecog + strata(sex), lung, weights = w, ties = ties, robust = TRUE))
  emit(paste0("lung_cluster_", ties),
       coxph(Surv(time, status) ~ age + ph.ecog + sex + cluster(cl), lung, ties = ties))
  emit(paste0("heart_", ties),
       coxph(Surv(start, stop, event) ~ age + year + surgery + transplant + cluster(id), heart, ties = ties))
  f <- coxph(Surv(start, stop, event) ~ age + year + surgery + transplant, heart, ties = ties)
  for (tr in c("km", "identity", "log", "rank")) {
    z <- cox.zph(f, transform = tr)
    out <- c(out, paste0("heart_zph_", ties, "_", tr, " chisq ", paste(num(z$table[, "chisq"]), collapse = " ")),
             paste0("heart_zph_", ties, "_", tr, " p ", paste(num(z$table[, "p"]), collapse = " ")))
  }
}
f <- coxph(Surv(time, status) ~ age + ph.ecog + sex, lung, ties = "efron", weights = w)
out <- c(out, paste0("lung_score_efron_weights ", paste(num(as.vector(residuals(f, type = "score"))), collapse = " ")))
out <- c(out, paste0("# R ", R.version$major, ".", R.version$minor, ", survival ", packageVersion("survival")))
writeLines(out, "survival.txt")
