"""``pyspark.pipelines``' names plus Lakeflow's (expectations, views, reads, Auto CDC), for
pipelines that say ``from lakehouse_assets.lib import dp``; defined in
:mod:`lakehouse_assets.lib.sdp.api`."""

from lakehouse_assets.lib.sdp.api import *  # noqa: F403 - this module is that one's public face
from lakehouse_assets.lib.sdp.api import __all__ as __all__
