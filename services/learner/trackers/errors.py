"""A tracker that cannot start: the learner stops at start-up with this one line (a
ConnectionError, so the service runner reports it as a start-up failure, exit 2), instead
of failing mid-run."""


class TrackerUnavailable(ConnectionError):
    pass


def missing_package(tracker: str, package: str) -> str:
    return (
        f"telemetry.trackers names {tracker}, but the {package} package is not installed: "
        f"pip install 'meshrl[trackers]' (or remove {tracker} from telemetry.trackers)"
    )
