#!/bin/bash
#PBS -p 5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
