#!/bin/sh
# libgdal-vsitune activation: GDAL loads plugins from GDAL_DRIVER_PATH, which
# replaces its built-in plugin directory. libgdal-core's own activation sets it to
# $CONDA_PREFIX/lib/gdalplugins when that directory exists; this keeps that and
# adds the directory when GDAL_DRIVER_PATH names others (or nothing), saving
# the value it found for deactivate.sh.
_vt_dir="${CONDA_PREFIX}/lib/gdalplugins"
export _CONDA_VSITUNE_GDAL_DRIVER_PATH="${GDAL_DRIVER_PATH-__unset__}"
case ":${GDAL_DRIVER_PATH-}:" in
  *":${_vt_dir}:"*) ;;
  "::") export GDAL_DRIVER_PATH="${_vt_dir}" ;;
  *) export GDAL_DRIVER_PATH="${GDAL_DRIVER_PATH}:${_vt_dir}" ;;
esac
unset _vt_dir
