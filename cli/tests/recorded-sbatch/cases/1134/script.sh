#!/bin/bash
#PBS -l walltime=00:10:00,xnodes=3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
