"""meshrl.cli.plot: a run's training curves as a PNG (`plot_run`, `meshrl plot RUN_DIR`).

Importing the package is cheap; matplotlib loads on the first `plot_run` call.
"""


def __getattr__(name):
    if name == "plot_run":
        from meshrl.cli.plot.figure import plot_run  # lazy: matplotlib, only when plotting

        return plot_run
    raise AttributeError(f"module 'meshrl.cli.plot' has no attribute {name!r}")
