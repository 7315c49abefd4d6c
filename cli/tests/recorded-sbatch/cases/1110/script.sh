#!/bin/bash
#PBS -l select=1:ncpus=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
