"""The jobs: one library function per job, called by the command line and by Python alike.

Each job owns its orchestration (defaults, state folder, resume, Ray, report record), so that
``bisent JOB ...`` and ``bisent.jobs.JOB(...)`` write the same output from the same defaults.
"""
