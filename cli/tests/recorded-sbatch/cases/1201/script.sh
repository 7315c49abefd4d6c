#!/bin/bash
#SBATCH -H

#PBS -l nodes=2:ppn=2
#SBATCH --dependency=afterany:{P1}:{P3}
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
