"""A worker that dies (os._exit, pytest-timeout's thread method, the OOM killer) is replaced by xdist with a worker of
a new id ("gw2" of 2): it takes the dead worker's share of the CPUs and GPUs, not an index past the last share (an empty
CPU set: sched_setaffinity raised EINVAL, an INTERNALERROR, in the new worker's configure)."""

CASES = '''
import os

@pytest.mark.parametrize("n", range(4))
@pytest.mark.gpu_budget(ram="2 GiB")
def test_case(gpu_budget, n):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 4}))

def test_dies():
    os._exit(1)
'''


def test_a_replaced_worker_measures_on_the_lost_workers_share(project):
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-n", "2")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=4, failed=1)
