#!/bin/bash
#SBATCH --dependency=afterany:{P1}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
