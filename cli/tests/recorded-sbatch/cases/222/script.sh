#!/bin/bash
#PBS -o pbs.out
#PBS -e pbs.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
