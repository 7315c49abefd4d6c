#!/bin/bash
#PBS -W umask=077
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
