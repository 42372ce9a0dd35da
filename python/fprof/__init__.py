"""fprof for Python: GPU profiles as DataFrames, and whole training jobs analysed on Dask.

    import fprof
    p = fprof.open("run.fprof")
    p.kernel_groups          # kernels by name and shape, placed on the roofline
    fprof.docs(p.kernels)    # each column and what it holds

Every number comes from fprof's C++ analysis (the module fprof._core), the same code as the fprof
command. docs/python-package.md is the guide.
"""

from ._core import FprofError, schema_version
from ._core import version as __version__
from ._tables import docs
from .profile import Profile, open

__all__ = ["FprofError", "Profile", "docs", "open", "schema_version", "__version__"]
