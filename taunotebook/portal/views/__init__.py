"""The Portal's views, one module per route: each takes a :class:`~taunotebook.portal.context.Context` and answers.

TauGrid's v2 reads (:mod:`.run`, :mod:`.metrics`, :mod:`.series`, :mod:`.run_config`, :mod:`.experiment_search`,
:mod:`.experiment_runs`), our page data (:mod:`.workspace_experiments`, :mod:`.run_table`, :mod:`.points`,
:mod:`.tails`), the series download (:mod:`.export`), the workspace directory (:mod:`.workspaces`) and the
Stellar pages (:mod:`.pages`). The route table is :mod:`taunotebook.portal.routes`.
"""
