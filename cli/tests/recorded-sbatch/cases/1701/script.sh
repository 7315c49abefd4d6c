#!/bin/bash
#SBATCH --reservation nosuchresv



#SBATCH --mem-per-cpu 2048K

#SBATCH -J "two words"
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
