"""A sync Python client for TauGrid's v2 Stellar reads, against the local Portal or TauGrid's real Portal.

Split as httpx is: :mod:`.errors` (typed exceptions from the error envelope), :mod:`.models`,
:mod:`.config_models`, :mod:`.checkpoint_models`, :mod:`.media_models`, :mod:`.table_models`,
:mod:`.tail_models` and :mod:`.note_models` (the answers, built by the one decoder in :mod:`.decode`),
:mod:`.links` (every URL the notebook side builds), :mod:`.client` (``PortalClient``, with its reads of a run's
files in :mod:`.run_files`, of its media in :mod:`.media_reads`, of page data and parameter importance in
:mod:`.page_reads` and of notes and tags in :mod:`.annotations`) and :mod:`.run_handle` (a run's notes and tags
from Python).
"""

from __future__ import annotations

from .artifact_models import Artifact, ArtifactPage
from .checkpoint_models import Checkpoint, CheckpointRetry, RunCheckpoints
from .client import SOURCES, PortalClient, check_source
from .config_models import ExperimentPage, ExperimentSummary, RunConfiguration
from .errors import (
    ENV_TOKEN,
    ENV_URL,
    AuthorizationError,
    ClientError,
    DependencyError,
    InternalError,
    NotFoundError,
    PortalError,
    PortalUnreachable,
)
from .job_models import ExperimentFaultEvents, RunJob
from .links import stellar_link, stellar_url
from .media_models import Histograms, ImageRef, ImagesAt, MediaTag, MediaTags, TextAt
from .models import (
    Availability,
    Experiment,
    ExperimentList,
    Freshness,
    Metadata,
    MetricSummary,
    NonFinitePoint,
    PointDetails,
    Provenance,
    Run,
    RunMetrics,
    RunPage,
    Series,
)
from .note_models import Note
from .run_handle import RunHandle, RunTags
from .series_columns import SeriesColumns
from .table_models import MetricStats, RunTable, RunTableRow
from .tail_models import Tail, Tails

__all__ = [
    "ENV_TOKEN",
    "ENV_URL",
    "SOURCES",
    "Artifact",
    "ArtifactPage",
    "AuthorizationError",
    "Checkpoint",
    "CheckpointRetry",
    "Availability",
    "ClientError",
    "DependencyError",
    "Experiment",
    "ExperimentList",
    "ExperimentFaultEvents",
    "ExperimentPage",
    "ExperimentSummary",
    "Freshness",
    "Histograms",
    "ImageRef",
    "ImagesAt",
    "InternalError",
    "MediaTag",
    "MediaTags",
    "Metadata",
    "MetricStats",
    "MetricSummary",
    "NonFinitePoint",
    "Note",
    "NotFoundError",
    "PointDetails",
    "PortalClient",
    "PortalError",
    "PortalUnreachable",
    "Provenance",
    "Run",
    "RunCheckpoints",
    "RunConfiguration",
    "RunJob",
    "RunMetrics",
    "RunHandle",
    "RunPage",
    "RunTable",
    "RunTableRow",
    "RunTags",
    "Series",
    "SeriesColumns",
    "TextAt",
    "Tail",
    "Tails",
    "check_source",
    "stellar_link",
    "stellar_url",
]
