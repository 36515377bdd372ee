# BrokenAdaptiveRidge's BAR (createBarPrior("bic"), its defaults) over Cyclops on a Cox data set
# in the format of ../shared/bench/cyclops (outcomes.csv, cov_row.i32, cov_col.i32; indicator
# covariates). Used by bench_bar.py. usage: Rscript bar_cyclops.R DATA_DIR OUT_CSV
suppressPackageStartupMessages({library(Cyclops); library(BrokenAdaptiveRidge)})
a <- commandArgs(trailingOnly = TRUE)
o <- read.csv(file.path(a[1], "outcomes.csv"))
nnz <- file.size(file.path(a[1], "cov_row.i32")) / 4
covariates <- data.frame(rowId = readBin(file.path(a[1], "cov_row.i32"), "integer", nnz),
                         covariateId = readBin(file.path(a[1], "cov_col.i32"), "integer", nnz) + 1,  # ids 1..P
                         covariateValue = 1)
t0 <- proc.time()
cd <- convertToCyclopsData(data.frame(rowId = o$row_id, y = o$status, time = o$time), covariates,
                           modelType = "cox", quiet = TRUE)
tConv <- proc.time() - t0
rm(covariates); invisible(gc())
t0 <- proc.time()
fit <- fitCyclopsModel(cd, prior = createBarPrior("bic"), control = createControl(noiseLevel = "silent"))
dt <- proc.time() - t0
b <- coef(fit)
write.csv(data.frame(name = as.character(as.integer(names(b)) - 1), beta = as.numeric(b)), a[2], row.names = FALSE)
cat(sprintf("{\"convert_cpu_s\": %.3f, \"cpu_s\": %.3f, \"wall_s\": %.3f}\n", tConv[1] + tConv[2], dt[1] + dt[2],
            dt[3]))
