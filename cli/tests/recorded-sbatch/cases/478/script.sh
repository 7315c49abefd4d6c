#!/bin/bash
#SBATCH --comment='it''s'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
