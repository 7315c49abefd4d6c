#!/bin/bash
#PBS -l walltime=1:00:00
#PBS -l nodes=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
