"""A comparative cohort study, as OHDSI's CohortMethod runs it around Cyclops: the propensity
model, trimming, matching, stratification or weighting, covariate balance, and the outcome
model on the adjusted population (:func:`cohort_study` runs them in one call); and the
self-controlled case series, as SelfControlledCaseSeries runs it (:func:`case_series`).

>>> import riskset
>>> from riskset.simulate import simulate_cohort
>>> from riskset.study import Population, fit_propensity, match_on_ps, covariate_balance
>>> data = simulate_cohort(n=3000, p=20, seed=2)
>>> _, scored = fit_propensity(data, prior=riskset.Laplace(variance=1.0))
>>> matched = match_on_ps(scored)
>>> matched.attrition.step.tolist()
['original data', 'propensity score', 'matched on propensity score']
"""
from riskset.study.adjustment import iptw, match_on_ps, stratify_by_ps, trim_by_ps, trim_to_equipoise, truncate_iptw
from riskset.study.balance import balance_summary, covariate_balance
from riskset.study.case_series import CaseSeriesStudy, case_series
from riskset.study.cohort import CohortStudy, cohort_study
from riskset.study.population import Population
from riskset.study.propensity import PropensityModel, equipoise, fit_propensity, preference_score

__all__ = ["Population", "PropensityModel", "fit_propensity", "preference_score", "equipoise", "trim_by_ps",
           "trim_to_equipoise", "match_on_ps", "stratify_by_ps", "iptw", "truncate_iptw", "covariate_balance",
           "balance_summary", "cohort_study", "CohortStudy", "case_series", "CaseSeriesStudy"]
