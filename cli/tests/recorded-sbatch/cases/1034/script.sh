#!/bin/bash
#SBATCH --nice 0
#PBS -l nodes=2:ppn=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
