#!/bin/bash
#SBATCH -o /dev/null

#SBATCH --comment "combo, with comma"
#SBATCH --nice 5
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
