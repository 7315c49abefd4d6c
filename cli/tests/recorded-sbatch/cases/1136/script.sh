#!/bin/bash
#PBS -l mpiprocs=2,walltime=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
