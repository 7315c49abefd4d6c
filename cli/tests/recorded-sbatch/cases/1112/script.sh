#!/bin/bash
#PBS -l procs=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
