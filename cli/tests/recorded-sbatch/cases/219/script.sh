#!/bin/bash
#PBS -l walltime=01:30:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
