#!/bin/sh
# libgdal-vsitune deactivation: GDAL_DRIVER_PATH back to what activate.sh found.
if [ "${_CONDA_VSITUNE_GDAL_DRIVER_PATH-}" = "__unset__" ]; then
  unset GDAL_DRIVER_PATH
elif [ -n "${_CONDA_VSITUNE_GDAL_DRIVER_PATH+x}" ]; then
  export GDAL_DRIVER_PATH="${_CONDA_VSITUNE_GDAL_DRIVER_PATH}"
fi
unset _CONDA_VSITUNE_GDAL_DRIVER_PATH
