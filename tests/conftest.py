# The tests mirror the package (tests/gate/ for pytest_jetson/gate/, ...) and share the helpers
# at this level (fakes/, boards.py, board_trees.py, orphans.py, layering.py, jtop_service.py):
# pytest puts this conftest's directory on sys.path, so ``from fakes import ...`` works from any
# of them, and in the spawned processes that inherit sys.path.
