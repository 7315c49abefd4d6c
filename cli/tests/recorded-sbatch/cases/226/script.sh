#!/bin/bash
#SBATCH -J sbatchname
#PBS -N pbsname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
