"""The four studies, one package per chapter. Each plans its runs (`plan`), analyses the finished ones
(`analysis`), draws them (`charts`) and grades the papers' claims (`verdicts`), every layer importing only
from the ones before it; the package re-exports its public names. `claims` holds the one Claim type they
share and the scorecard; `sweeps` lays out families of runs; `numerics` checks training numerics."""
