#!/bin/bash
#SBATCH --comment="quoted, with comma"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
