#!/bin/bash
#PBS -r n
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
