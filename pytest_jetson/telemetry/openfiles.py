"""Files a telemetry source keeps open between samples and reads again from offset 0, as sysfs
and procfs allow (each read regenerates the file): at 100 Hz, opening ~20 files per sample would
cost more than reading them."""

import os
from typing import Dict, Hashable, List, Optional


class OpenFiles:
    """Open descriptors by key. A read that fails closes its file; the next one opens it again."""

    def __init__(self) -> None:
        self._fds: Dict[Hashable, int] = {}

    def pread(self, key: Hashable, path: str, limit: int, flags: int = os.O_RDONLY) -> Optional[bytes]:
        """Up to ``limit`` bytes from the start of ``path`` (kept open under ``key``); None when it
        cannot be opened or read."""
        fd = self._fds.get(key)
        try:
            if fd is None:
                fd = self._fds[key] = os.open(path, flags)
            return os.pread(fd, limit, 0)
        except OSError:
            self.close(key)
            return None

    def keys(self) -> List[Hashable]:
        return list(self._fds)

    def close(self, key: Hashable) -> None:
        fd = self._fds.pop(key, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def close_all(self) -> None:
        for key in list(self._fds):
            self.close(key)
