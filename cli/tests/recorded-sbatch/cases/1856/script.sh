#!/bin/bash
#PBS -l walltime=00:30:00
#SBATCH --requeue
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --nodelist=n[1-2]
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
