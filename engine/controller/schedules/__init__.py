"""Schedules: children a job makes on a cron schedule, as the CronJob controller makes Jobs.

plan.py decides one sync without touching the API (what to delete, what to make, the
Events, the status, when to look again); run.py reads the children, acts and writes.
"""
