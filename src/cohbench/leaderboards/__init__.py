"""The leaderboard (`cohbench leaderboard`, `cohbench.leaderboard()`): any scorer (a reference, the baseline, a
folder of predictions, a Python function) on every config it applies to, each by its own protocol, with bootstrap CIs, the paired difference from the best reference,
a macro-average, and the published figures beside. `board` computes, `scorers` turns `--scorer` into predictions (a user's function in its own process: `user_scorer`, `scorer_process`),
`render` prints and plots, `store` writes results per scorer keyed by the release.
The papers' figures come from `cohbench.published`, a floor below, which the baseline reads too."""
