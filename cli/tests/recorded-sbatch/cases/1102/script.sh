#!/bin/bash
#PBS -W depend=afterok:{P1},umask=022
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
