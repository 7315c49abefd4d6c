#!/bin/bash
#SBATCH -n4
#SBATCH --output %x-%j.log

#SBATCH --mail-type=END
## note: #SBATCH -n 999 is not a directive here
#PBS -l walltime=00:30:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
