"""Running a suite: the plan (the cases for a spec, no device needed), the runner (trials, order,
watchdog), worker processes, the run's journal and the suites."""
