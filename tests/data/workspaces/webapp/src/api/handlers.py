"""HTTP handlers of the webapp."""


def health() -> dict[str, str]:
    return {"status": "ok"}
