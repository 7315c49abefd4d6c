#!/bin/bash
#PBS -W DEPEND=afterany:{P1}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
