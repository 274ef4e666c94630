"""`hive web`: the run in a browser, built around what needs the human (issue 26). app (the server),
security (who may do what), routes (the URLs; actions call hive/actions like the verbs do), views
and taskpage (the pages as records), attention (what needs you), layout (the DAG), charts (the
timeline and the spend), pages (the Jinja templates), live and watch (server-sent events when
Hive's files change)."""
