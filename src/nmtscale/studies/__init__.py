"""The four studies, one module per chapter: each plans its runs, analyses the finished ones and grades the
papers' claims (`claims` below holds the one Claim type they share); `sweeps` lays out families of runs."""
