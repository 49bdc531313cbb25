"""pytest set-up for the fuzzing harness: the ``fuzz`` marker (select with ``-m fuzz``, leave out with
``-m "not fuzz"``)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: the fuzzing contract test (hostile and broken input files, issue 9)")
