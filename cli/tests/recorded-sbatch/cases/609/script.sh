#!/bin/bash
#SBATCH --open-mode append
#SBATCH --dependency=afterok:{P1}
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
