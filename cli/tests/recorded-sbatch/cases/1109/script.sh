#!/bin/bash
#PBS -l select=2:ncpus=8:mpiprocs=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
