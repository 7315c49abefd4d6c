#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -d singleton,afterok:{P2}
#PBS -N pbsjob
#SBATCH --chdir=rel
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
