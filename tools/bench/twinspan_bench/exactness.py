"""Exactness bookkeeping: replies compared by token_sha256, counted as equal / unequal / failed."""

import dataclasses

CHECKS = ("alone", "serial", "repeat")


@dataclasses.dataclass
class Tally:
    """Counts for one check kind; a comparison with a failed or hash-less reply counts as failed."""

    equal: int = 0
    unequal: int = 0
    failed: int = 0

    def add(self, other: "Tally") -> None:
        self.equal += other.equal
        self.unequal += other.unequal
        self.failed += other.failed

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def outcome(got, want) -> str:
    """'equal', 'unequal' or 'failed' for two GenResults (either may be None when never run)."""
    if got is None or want is None or not got.ok or not want.ok:
        return "failed"
    if not got.token_sha256 or not want.token_sha256:
        return "failed"
    return "equal" if got.token_sha256 == want.token_sha256 else "unequal"


class Ledger:
    """Collects every comparison of one cell and keeps the evidence of each one that was not equal."""

    def __init__(self):
        self.tallies = {check: Tally() for check in CHECKS}
        self.findings = []

    def compare(self, check: str, got, want, **where) -> str:
        """Counts one comparison under `check`; `where` (stream, rep, seed...) goes into the evidence."""
        result = outcome(got, want)
        tally = self.tallies[check]
        setattr(tally, result, getattr(tally, result) + 1)
        if result != "equal":
            self.findings.append({
                "check": check, "outcome": result, **where,
                "got": got.token_sha256 if got is not None else None,
                "want": want.token_sha256 if want is not None else None,
                "error": (got.error if got is not None and not got.ok else "")
                or (want.error if want is not None and not want.ok else ""),
            })
        return result

    def as_dict(self) -> dict:
        return {check: tally.as_dict() for check, tally in self.tallies.items()}


def any_unequal_or_failed(exact: dict) -> bool:
    """True when a cell's exactness counts hold an unequal or failed comparison."""
    return any(t["unequal"] or t["failed"] for t in exact.values())
