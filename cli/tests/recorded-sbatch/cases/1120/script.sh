#!/bin/bash
#PBS -l walltime=3600
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
